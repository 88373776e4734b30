"""Declaring a finite machine: the YAML spec loader, the safe expression language,
domains, actions/choices/decide tables, and compiling a spec to step functions."""

from .compiled import CompiledSpec, Machine
from .errors import Problem, SpecError
from .spec import Spec, load_spec, parse_spec

__all__ = ["CompiledSpec", "Machine", "Problem", "Spec", "SpecError", "load_spec", "parse_spec"]
