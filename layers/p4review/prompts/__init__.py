"""Versioned prompt templates and their registry (registry.json); see logic/prompts.py."""
