"""The offline heuristic reviewer (offline/reviewer.py). Its version lives here so that naming
the reviewer does not import its rules: they are loaded by the first review they run
(review/reviewers.py), which a provider-backed function may never need."""

# Its rules are its prompt: this is the prompt_version its answers carry.
OFFLINE_PROMPT_VERSION = "1.3.0"
