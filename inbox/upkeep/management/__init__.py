"""Django management commands of upkeep (`commands/`); nothing imports them."""
