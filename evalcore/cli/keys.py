"""``evalcore keys create|list|revoke``: the keys machines present to the HTTP API (docs/API.md).

``create`` prints the key once, alone on the last line of stdout (a script takes it with
``| tail -n 1``); the store keeps only its SHA-256.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evalcore.authors import os_author
from evalcore.boundary.text import for_terminal
from evalcore.cli.shared.common import open_store, print_json
from evalcore.cli.shared.options import json_option
from evalcore.read.keys import keys
from evalcore.store.keys import SCOPES, check_scopes, create_key, revoke_key

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers


def cmd_create(args: argparse.Namespace) -> int:
    scopes = check_scopes(args.scope.split(","))
    key = create_key(open_store(args), args.name, scopes, os_author())
    print(f"key {for_terminal(args.name.strip())} created with scopes {','.join(scopes)}; it is shown only now:")
    print(key)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    rows = keys(open_store(args))
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no API keys yet; make one with: evalcore keys create NAME --scope read")
        return 0
    for r in rows:
        state = f"revoked {r['revoked_at']:%Y-%m-%d %H:%M}" if r["revoked_at"] is not None else "in use"
        used = f"{r['last_used_at']:%Y-%m-%d %H:%M}" if r["last_used_at"] is not None else "never"
        print(
            f"{for_terminal(r['name']):<20} {r['scopes']:<40} by {for_terminal(r['author'] or 'not recorded')}, "
            f"created {r['created_at']:%Y-%m-%d %H:%M}, last used {used}, {state}"
        )
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    revoke_key(open_store(args), args.name)
    print(f"key {for_terminal(args.name.strip())} revoked: the API refuses it from now on")
    return 0


def add_keys(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "keys",
        help="API keys for /api/v1 (create, list, revoke)",
        description="Keys that scripts, CI and production present to the HTTP API (docs/API.md). "
        "The store keeps only a hash of each key.",
    )
    keys_sub = sp.add_subparsers(dest="keys_command", required=True, metavar="ACTION", help="create, list or revoke")
    create = keys_sub.add_parser(
        "create",
        help="make a key and print it once (alone on the last line)",
        description="Make a key named NAME with the scopes given; it is printed once, alone on the last "
        "line of stdout, and never again.",
    )
    create.add_argument("name", metavar="NAME", help="the key's name (what its writes record as their author)")
    create.add_argument(
        "--scope", required=True, metavar="SCOPE[,SCOPE]", help=f"what the key may do: {', '.join(SCOPES)}"
    )
    create.set_defaults(func=cmd_create)
    listing = keys_sub.add_parser("list", help="every key: name, scopes, author, created, last used, revoked")
    json_option(listing)
    listing.set_defaults(func=cmd_keys_list)
    revoke = keys_sub.add_parser("revoke", help="revoke the key in use named NAME")
    revoke.add_argument("name", metavar="NAME")
    revoke.set_defaults(func=cmd_revoke)
