"""Tokens as the providers count them, where the estimator (characters / 3.5) only guesses.

`tools/tokenizers` (npm, pinned by its package-lock.json; `make tokenizers`) holds OpenAI's
o200k_base encoding, the tokenizer of GPT-4o, GPT-4.1 and the GPT-5 family, as ported by
gpt-tokenizer (exact), and Anthropic's published Claude tokenizer (`@anthropic-ai/tokenizer`,
whose README says it is no longer accurate from Claude 3 on and is "a very rough approximation"
there; Anthropic publishes no other, only a counting API). Development only: nothing here ships."""

from __future__ import annotations

import json
import shutil
import subprocess  # nosec B404: node runs our own script on texts we pass it, no shell
from pathlib import Path

TOKENIZERS = Path(__file__).resolve().parents[1] / "tools" / "tokenizers"
O200K = "o200k_base"
CLAUDE = "claude"


def tokenizers_installed() -> bool:
    return shutil.which("node") is not None and (TOKENIZERS / "node_modules" / "gpt-tokenizer").is_dir()


def count_tokens(texts: list[str]) -> dict[str, list[int]]:
    """-> {"o200k_base": [...], "claude": [...]}, one count per text, in order."""
    if not tokenizers_installed():
        raise RuntimeError(f"the tokenizers are not installed: run `make tokenizers` ({TOKENIZERS})")
    node = shutil.which("node") or "node"
    finished = subprocess.run(  # nosec B603: fixed argv, no shell
        [node, str(TOKENIZERS / "count.mjs")],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    counts: dict[str, list[int]] = json.loads(finished.stdout)
    return counts
