"""Text the model wrote, made inert before a person or Swarm reads it (docs/security.md "The
model's answer").

A change can steer what the model writes, so a title or message may carry a link to click or a
Swarm mention. Two kinds of neutralizing, each for what reads it:

- `without_links` (email and Swarm): a URL's `scheme://` becomes `scheme[:]//` and a bare `www.`
  becomes `www[.]`, visibly ("defanged", as security advisories write them). No autolinker
  matches them: Swarm's (module/Application/src/Filter/Linkify.php, `$urlPattern`, needs
  `http|https|ftp` then `://`), GitHub-flavoured Markdown's (`http://`, `https://` or `www.`), and a
  mail client's, which also links bare URLs in a plain-text part. Visible, because a mail body's
  invisible characters are removed before it is laid out (email/render.py `_clean`).
- `without_mentions` (Swarm): a word joiner (U+2060) after every `@`, and between the two slashes
  of a `//depot/...` path. Swarm reads mentions from a comment's raw body
  (module/Comments/src/Listener/CommentListener.php: `Linkify::getCallouts($comment->get('body'))`,
  which notifies `@user` and adds `@*user` and `@@*group` as required reviewers); its pattern
  (Linkify.php `getCallouts`, `$calloutPattern`: `^\\@{1,2}(\\*|!?)[\\w]+...`) and the display
  linkifier's (`$gotoPattern` for `@user`, `@123` changes and `@path`, `$emailPattern` for
  `user@host`) need a word character (or `*`/`!`/a second `@`) right after the `@`; U+2060 is a
  format character, not one of them. It is invisible, so the text reads as the model wrote it.

Only the model's text goes through these: the finding's location (`file:line`) and every other
line the service writes itself are left as they are."""

from __future__ import annotations

import re

WORD_JOINER = "\u2060"
# Wherever they start, not at a word's start only: cmark-gfm links `1https://x`, `_https://x` and
# `x_www.x` (extensions/autolink.c: a scheme is rewound over letters only; `www.` may follow `_`).
_SCHEME = re.compile(r"(?i)([a-z][a-z0-9+.\-]*):(?=//)")
_WWW = re.compile(r"(?i)(www)\.")
_AT = re.compile(r"@")
_DEPOT_PATH = re.compile(r"(?<![:/\w\]])//(?=[\w.\-]+/)")  # not the // of a (defanged) URL


def without_links(text: str) -> str:
    """`https://x` -> `https[:]//x`, `www.x` -> `www[.]x`."""
    return _WWW.sub(r"\1[.]", _SCHEME.sub(r"\1[:]", text))


def without_mentions(text: str) -> str:
    """`@alice`, `@*alice`, `@@group`, `@123`, `a@b.c` and `//depot/...` with a word joiner
    after each `@` and between the two slashes: shown the same, matched by no Swarm pattern."""
    return _DEPOT_PATH.sub("/" + WORD_JOINER + "/", _AT.sub("@" + WORD_JOINER, text))


def inert_for_swarm(text: str) -> str:
    return without_mentions(without_links(text))
