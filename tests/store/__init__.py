"""Tests of the Group log stores, the hash chain, the SQL views and the Parquet export."""
