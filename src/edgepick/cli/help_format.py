"""`--help` written for people, not for the type checker.

Typer labels a value by its Python annotation (`<bool>`, `<list[str]>`, `<int range> [x>=1]`)
and a required argument as `{name}`. Those labels come from a few places in typer's core
(`TyperOption.display_type_rich`, `TyperArgument`'s display names and usage pieces,
`describe_number_range`, `_get_default_string`); `install()` replaces them once, for every
command, so no declaration has to remember a metavar:

- a flag (`--json`, `--flash-attn/--no-flash-attn`) shows no value at all;
- a value shows a word: the option's own name for text and paths (`--store STORE`), `N` for a
  whole number, `NUMBER` for a decimal, `A|B` for a choice; a list adds `,…` (comma-separated
  or repeated, docs/cli.md);
- an argument reads `DEPLOY` (required) or `[DEPLOY]`;
- a range reads "at least 1", "0 to 1";
- a default given in words (`show_default="..."`) is shown as written, without typer's ( ).

A declaration's own `metavar=` still wins.
"""

from __future__ import annotations

import typing
from pathlib import Path

import typer.core as core

_installed = False


def number_range(low, high) -> str | None:
    if low is None and high is None:
        return None
    if high is None:
        return f"at least {low}"
    if low is None:
        return f"at most {high}"
    return f"{low} to {high}"


def _element(annotation) -> object:
    """The element type of list[X] / Optional[X], else the annotation itself."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is list or (args and len(args) == 1):
        return _element(args[0]) if args else str
    return annotation


def value_label(param) -> str | None:
    """The word shown after an option that takes a value; None for a flag."""
    if param.metavar is not None:
        return param.metavar or None
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    desc = param.type_descriptor
    many = desc.is_list
    if desc.is_choice:
        label = "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
    else:
        kind = _element(desc.annotation)
        if kind is bool:
            label = "true|false"
        elif kind is int:
            label = "N"
        elif kind is float:
            label = "NUMBER"
        else:  # text, a path: the option's own name says what it is
            label = (param.name or "value").upper()
            if kind is Path or desc.is_path:
                label = label if label not in ("OUT", "OUTPUT") else "PATH"
    return f"{label},…" if many else label


def install() -> None:
    """Replace typer's type labels for every command of this process (idempotent)."""
    global _installed
    if _installed:
        return

    def option_label(self, ctx):  # noqa: ARG001 - typer's signature
        return value_label(self)

    def argument_name(self) -> str:
        return self.metavar if self.metavar is not None else (self.name or "arg").upper()

    def argument_usage(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    original_default = core._get_default_string

    def default_string(obj, *, ctx, show_default_is_str, default_value):
        # a default given as words (`show_default="the plan's"`) is shown as written, not in ()
        if show_default_is_str:
            return str(obj.show_default)
        return original_default(obj, ctx=ctx, show_default_is_str=False,
                                default_value=default_value)

    core._get_default_string = default_string
    core.TyperOption.display_type_rich = option_label
    core.TyperArgument.display_type_rich = lambda self, ctx: None  # its name already says it
    core.TyperArgument.display_name_raw = property(argument_name)
    core.TyperArgument._usage_display_name = argument_usage
    # a hidden (deprecated) positional is accepted but never shown, in the usage line too
    shown_pieces = core.TyperArgument.get_usage_pieces
    core.TyperArgument.get_usage_pieces = \
        lambda self, ctx: [] if self.hidden else shown_pieces(self, ctx)
    core.describe_number_range = number_range
    _installed = True
