#!/usr/bin/env python3
"""Regenerate the fixture depot's non-plain-text revisions, deterministically.

These are awkward to hand-edit: binary images (PNG, DDS), a Latin-1 (not UTF-8) text
file, and a fake PEM private key for the credential change. Stdlib only. Run from anywhere:

    python3 events/tools/gen_blobs.py [--depot DIR]

The key is hash-chain filler shaped like a PKCS#1 RSA key: it is not a key and not a secret.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import struct
import zlib
from pathlib import Path

DEPOT = Path(__file__).resolve().parent.parent / "depot"
ARCHIVE = DEPOT / "archive"


def write(depot_path: str, rev: int | str, data: bytes) -> None:
    directory = ARCHIVE / (depot_path[2:] + ",d")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / str(rev)).write_bytes(data)


def filler(seed: bytes, size: int) -> bytes:
    out = b""
    while len(out) < size:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return out[:size]


def png(width: int, height: int, rgba: tuple[int, int, int, int]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    row = b"\x00" + bytes(rgba) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height, 9))
        + chunk(b"IEND", b"")
    )


def dds(width: int, height: int, seed: bytes) -> bytes:
    # DDS header (124 bytes) for a DXT1 texture, followed by filler block data.
    header = struct.pack("<4sIIIIIII", b"DDS ", 124, 0x81007, height, width, width * height // 2, 0, 1)
    header += b"\x00" * 44 + struct.pack("<II4s", 32, 0x4, b"DXT1") + b"\x00" * 20 + struct.pack("<I", 0x1000)
    header += b"\x00" * (128 - len(header))
    return header + filler(seed, width * height // 2)


def fake_key() -> bytes:
    der = b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00" + filler(
        b"p4review fixture: FAKE key, not a secret", 1180
    )
    b64 = base64.b64encode(der).decode()
    body = "\n".join(b64[i : i + 64] for i in range(0, len(b64), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n".encode()


FR_STRINGS_13 = """\
# Cha\u00eenes d'interface \u2014 fran\u00e7ais (France). Encodage : ISO-8859-1 (h\u00e9ritage console).
CAFE_TITLE=Caf\u00e9
CAFE_RESUME=Reprendre
CAFE_SETTINGS=Param\u00e8tres
CAFE_QUIT=Quitter la partie
MENU_BACK=Retour
MENU_CONFIRM=Valider
ERR_NETWORK=Connexion au serveur impossible. R\u00e9essayez plus tard.
"""

FR_STRINGS_14 = FR_STRINGS_13.replace("CAFE_RESUME=Reprendre", "CAFE_RESUME=\u00ab Reprendre \u00bb").replace(
    "CAFE_QUIT=Quitter la partie",
    "CAFE_QUIT=Quitter la partie\nCAFE_QUIT_CONFIRM=Voulez-vous vraiment quitter ? La progression non sauvegard\u00e9e sera perdue.",
)


def main(argv: list[str] | None = None) -> None:
    global ARCHIVE
    parser = argparse.ArgumentParser(description="regenerate binary/Latin-1/key fixture revisions")
    parser.add_argument("--depot", type=Path, default=DEPOT, help="depot dir to write into (default: events/depot)")
    ARCHIVE = parser.parse_args(argv).depot / "archive"
    write("//depot/engine/main/assets/ui/net_overlay_icons.png", 1, png(16, 16, (40, 160, 220, 255)))
    write("//depot/engine/main/assets/ui/net_overlay_icons.png", 2, png(16, 16, (230, 120, 30, 255)))
    write("//depot/game/main/ui/textures/cafe_menu_bg.dds", 2, dds(64, 64, b"cafe_menu_bg#2"))
    write("//depot/game/main/ui/textures/cafe_menu_bg.dds", 3, dds(64, 64, b"cafe_menu_bg#3"))
    # The em dash has no Latin-1 form; the old console tools wrote "-" instead.
    write("//depot/game/main/ui/strings/fr_FR.txt", 13, FR_STRINGS_13.replace("\u2014", "-").encode("latin-1"))
    write("//depot/game/main/ui/strings/fr_FR.txt", 14, FR_STRINGS_14.replace("\u2014", "-").encode("latin-1"))
    write("//depot/services/telemetry/main/certs/uploader-staging.key", 1, fake_key())


if __name__ == "__main__":
    main()
