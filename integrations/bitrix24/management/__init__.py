"""Management commands of the Bitrix24 sync (see `commands/`)."""
