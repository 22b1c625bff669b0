"""Versioned prompt templates and their registry (registry.json); see review/prompts.py."""
