"""Shared pytest setup: puts tests/ on sys.path so any test can `from helpers import check_op`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
