"""Operator workflows (no AWS imports here: they talk to the data-access ports)."""
