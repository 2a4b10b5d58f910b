"""`python -m inbox.site.web_server …`: daphne, with an access log masked like every other log.

Daphne writes its access log straight to a stream, past Python's logging and so past the privacy
filter (`inbox/platform/logs.py`): a search for a phone number (`/inbox/?q=7701…`) or the
webhook handshake's `hub.verify_token` would be written in full. This runs daphne's own command
line, with the same arguments, and an access log that masks phone numbers and secret query
parameters. Daphne offers no option for its access logger, so its class is swapped here, before
the command line builds it.
"""

from __future__ import annotations

from datetime import datetime

from daphne import cli
from daphne.access import AccessLogGenerator

from inbox.platform.logs import mask_request_line


class MaskedAccessLog(AccessLogGenerator):  # type: ignore[misc]
    def write_entry(
        self,
        host: str,
        date: datetime,
        request: str,
        status: int | None = None,
        length: int | None = None,
        ident: str | None = None,
        user: str | None = None,
    ) -> None:
        super().write_entry(host, date, mask_request_line(request), status, length, ident, user)


def main() -> None:
    cli.AccessLogGenerator = MaskedAccessLog
    cli.CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
