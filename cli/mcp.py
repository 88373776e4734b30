"""temporary"""
from typing import Any
import argparse
def add_parser(sub: Any) -> None:
    sub.add_parser("mcp")
def cmd_mcp(args: argparse.Namespace) -> int:
    return 0
