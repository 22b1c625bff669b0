"""CDK infrastructure for p4review (one stack per environment)."""
