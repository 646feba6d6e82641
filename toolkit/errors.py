"""The exception hierarchy and the exit codes it maps to.

Every error a user can cause derives from `GpuctlError`. The CLI prints `str(error)` (plus any
hint) and exits with `error.exit_code`; it never shows a traceback for these. Anything else that
escapes is a bug and exits with `EXIT_INTERNAL`.

Exit codes (documented in the README, stable for scripts):

| code | meaning |
| ---- | ------- |
| 0    | success |
| 1    | internal error: a bug in gpuctl, please report it |
| 2    | usage: wrong command-line arguments, a path given on the command line does not exist or cannot |
|      | be read, or the gpuctl home (GPUCTL_HOME) or a file in it cannot be used (a link, a full disk) |
| 3    | the spec file is not valid YAML or does not match the schema |
| 4    | the spec is well-formed but does not fit what the cloud sells (catalog check) |
| 5    | a capture or log given to detect/tune/check-log cannot be parsed |
| 6    | a provider operation failed (cloud API, Pulumi, local lab) |
| 7    | a required tool or privilege is missing (Pulumi CLI, root, debootstrap) |
| 8    | a check ran and found a problem (e.g. check-log: fabric not used) |
| 9    | a check ran but the input does not say enough to decide (check-log: "unknown") |
| 130  | interrupted (Ctrl-C) |
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_SPEC = 3
EXIT_CATALOG = 4
EXIT_PARSE = 5
EXIT_PROVIDER = 6
EXIT_MISSING_TOOL = 7
EXIT_CHECK_FAILED = 8
EXIT_UNKNOWN = 9  # a verdict, not an error: commands return it (check-log prints "unknown: ...")
EXIT_INTERRUPTED = 130


class GpuctlError(Exception):
    """Base of every error a user can cause; carries its exit code and an optional fix hint."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class UsageError(GpuctlError):
    exit_code = EXIT_USAGE


class SpecError(GpuctlError):
    """The spec file is unreadable, not YAML, or does not match the schema.

    `problems` holds one line per problem, each naming file, line and key path.
    """

    exit_code = EXIT_SPEC

    def __init__(self, problems: list[str], *, hint: str | None = None) -> None:
        self.problems = [_one_line(p) for p in problems]
        super().__init__("\n".join(self.problems), hint=hint)


def _one_line(text: str) -> str:
    """Escape newlines and control characters echoed from user input: one problem, one line."""
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


class CatalogError(GpuctlError):
    """The spec is valid YAML and schema, but asks for something the cloud does not sell."""

    exit_code = EXIT_CATALOG

    def __init__(self, problems: list[str], *, hint: str | None = None) -> None:
        self.problems = [_one_line(p) for p in problems]
        super().__init__("\n".join(self.problems), hint=hint)


class ParseError(GpuctlError):
    """A capture (nvidia-smi, ibv_devinfo, NCCL log ...) cannot be parsed.

    Names the file and line so the user can look at the offending input.
    """

    exit_code = EXIT_PARSE

    def __init__(
        self,
        message: str,
        *,
        source: str = "<input>",
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}", hint=hint)


class ProviderError(GpuctlError):
    exit_code = EXIT_PROVIDER


class MissingToolError(GpuctlError):
    """A tool, privilege or credential is missing. `credentials`: a credential is among what is
    missing (a key pair, a profile, the state passphrase), so a caller can say "credentials" only
    then and name the tool otherwise: both exit 7."""

    exit_code = EXIT_MISSING_TOOL

    def __init__(self, message: str, *, hint: str | None = None, credentials: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.credentials = credentials


class CheckFailed(GpuctlError):  # noqa: N818 -- reads as a verdict: "raise CheckFailed(...)"
    exit_code = EXIT_CHECK_FAILED
