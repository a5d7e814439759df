"""Writing a class over several cells (a plain module: no chapter exports it).

A chapter explains a class method by method, so its code should sit beside the prose of each method,
not in one cell of a few hundred lines.  ``add_to_class`` lets a later cell add a method::

    # %% tags=["export"]
    @add_to_class(LightTree)
    def append(self, value):
        ...

In the notebook the decorator runs: it sets ``LightTree.append`` and the class is complete after the
cell.  In the package the decorator never runs: ``tools/export.py`` moves such a function into the
body of the class it names (in the same generated module) and drops the decorator, so the module
reads as one ordinary class definition and ``import`` gives the same class the notebook built.

Rules (the exporter refuses a cell that breaks the first two):

* a cell that adds methods holds only such functions (after its leading imports and comments);
* the class lives in the same module as the cell exports to;
* the decorator is the outermost one; others (``@property``, ``@staticmethod``, ``@x.setter`` ...)
  come after it and stay;
* no zero-argument ``super()`` and no ``__double_underscore`` names inside an added method: both
  depend on the function being written inside the class body, which it is only in the package.

``sections_from(twin)`` serves two classes with the same methods (the dense and the memory-light
tree): the numpydoc sections are written once, on the first class's method, and the second's
docstring says what differs; the decorator stays in the package, where it appends the sections.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

__all__ = ["add_to_class", "sections_from", "FieldView"]


def _function_of(member: Any) -> Any:
    """The plain function behind a method, property, staticmethod or classmethod."""
    if isinstance(member, property):
        return member.fget
    return getattr(member, "__func__", member)


def add_to_class(cls: type) -> Callable[[Any], Any]:
    """Decorator: add the decorated function (or property, staticmethod, ...) to ``cls``.

    Parameters
    ----------
    cls : type
        The class that receives the member, under the function's own name.

    Returns
    -------
    callable
        A decorator that sets the attribute on ``cls`` and returns the member unchanged.
    """
    if not isinstance(cls, type):
        raise TypeError(f"add_to_class: cls must be a class, got {type(cls).__name__}")

    def decorate(member: Any) -> Any:
        function = _function_of(member)
        name = getattr(function, "__name__", None)
        if not isinstance(name, str):
            raise TypeError(f"add_to_class: cannot name {member!r} (decorate a def)")
        if callable(function) and hasattr(function, "__qualname__"):
            function.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, member)
        set_name = getattr(member, "__set_name__", None)
        if set_name is not None:
            set_name(cls, name)
        return member

    return decorate


_SECTION = re.compile(r"^[A-Z][A-Za-z ]*\n-{3,}[ \t]*$", re.M)


def sections_from(twin: Callable[..., Any]) -> Callable[[Any], Any]:
    """Decorator: end the decorated function's (or class's) docstring with the numpydoc sections of
    ``twin``'s.

    Two classes with the same method (``BinaryTree.leaf`` and ``LightTree.leaf``) say its
    Parameters, Returns, ... once, in the first; the second's docstring says "As in
    ``BinaryTree.leaf``" and only what differs, and ``help`` shows both with the full sections.

    Parameters
    ----------
    twin : callable
        The function (or class) whose docstring holds the sections (from its first ``Name`` / ``----`` header on).

    Returns
    -------
    callable
        A decorator that sets the function's (or class's) ``__doc__`` to its own text followed by
        those sections, and returns it.

    Raises
    ------
    TypeError
        If ``twin`` is not callable, or the decorated object is neither a function nor a class.
    ValueError
        If ``twin``'s docstring has no numpydoc section.
    """
    if not callable(twin):
        raise TypeError(f"sections_from: twin must be callable, got {type(twin).__name__}")
    doc = inspect.getdoc(twin) or ""
    first = _SECTION.search(doc)
    if first is None:
        raise ValueError(
            f"sections_from: the docstring of {getattr(twin, '__qualname__', twin)!r} has no numpydoc section"
        )
    sections = doc[first.start() :]

    def decorate(function: Any) -> Any:
        if not (inspect.isfunction(function) or inspect.isclass(function)):
            raise TypeError(f"sections_from: decorate a def or a class, got {type(function).__name__}")
        function.__doc__ = inspect.cleandoc(function.__doc__ or "") + "\n\n" + sections
        return function

    return decorate


class FieldView:
    """A read-only attribute that shows a private one: ``labels = FieldView("...")`` in a class body
    makes ``obj.labels`` return ``obj._labels`` -- one line for each plain getter of a class (the
    fixed parameters of a model) instead of a ``@property`` function each.

    Parameters
    ----------
    doc : str
        The attribute's docstring (what ``help`` shows).
    attribute : str or None
        The private attribute shown; ``None``: ``"_" + name`` for the name the view is bound to.

    Raises
    ------
    AttributeError
        On assignment or deletion through the view (as for a property without a setter).
    """

    def __init__(self, doc: str, attribute: str | None = None):
        if not isinstance(doc, str):
            raise TypeError(f"doc must be a str, got {type(doc).__name__}")
        if attribute is not None and not isinstance(attribute, str):
            raise TypeError(f"attribute must be a str or None, got {type(attribute).__name__}")
        self.__doc__, self._attribute, self._name = doc, attribute, attribute

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        if self._attribute is None:
            self._attribute = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if self._attribute is None:  # used outside a class body: no name to read
            raise AttributeError("a FieldView must be assigned in a class body (or given its attribute)")
        return getattr(obj, self._attribute)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"{self._name} is read-only")

    def __delete__(self, obj: Any) -> None:
        raise AttributeError(f"{self._name} is read-only")
