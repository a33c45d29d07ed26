"""Tests of the Sandbox and its drivers."""
