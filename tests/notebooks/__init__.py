"""Notebook and widget tests."""
