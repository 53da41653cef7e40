"""Backends: one file per framework behind the contract in base.py."""
