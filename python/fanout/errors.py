"""Exceptions raised by fanout: one per status code of the C++ client.

Each carries the server's message, which names the server's address where a
server was involved.
"""


class Error(RuntimeError):
    """Base class of every fanout error."""


class InvalidArgument(Error, ValueError):
    """A bad argument: ids outside the graph, a bad option, a malformed file."""


class NotFound(Error, LookupError):
    """Something asked for does not exist (a file, a split, labels)."""


class Corruption(Error):
    """Data that does not parse or does not match what was expected."""


class IOError(Error, OSError):  # noqa: A001 (named after the status code)
    """A file or socket could not be read or written."""


class NotSupported(Error):
    """This build or this machine cannot do what was asked."""


class Unavailable(Error, ConnectionError):
    """A server cannot be reached or went away."""


class DeadlineExceeded(Error, TimeoutError):
    """A server did not answer in time."""


class ResourceExhausted(Error):
    """A limit was reached (memory, request size, queue)."""


class Aborted(Error):
    """The operation was stopped."""


class Unauthenticated(Error, PermissionError):
    """A server requires a credential (auth token, TLS certificate) that was missing or wrong."""


class Internal(Error):
    """A bug: please report it with the message."""
