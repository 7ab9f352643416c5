"""Rendering of result dictionaries: rich tables for people, JSON/YAML/Markdown for machines."""
