"""Django management commands of the conversation core (`commands/`): entry points outside the
layer contract that run the core's processes and set-up from the shell; nothing imports them."""
