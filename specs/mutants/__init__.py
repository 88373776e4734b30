"""Deliberately broken variants of the seed specs; each must be caught."""
