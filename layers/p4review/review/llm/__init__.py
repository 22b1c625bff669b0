"""LLM providers behind one interface (`base.LlmProvider`). Each SDK is imported lazily, in
the module of the provider that uses it: a function pays only for the provider it runs."""
