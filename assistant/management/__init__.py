"""Django's management commands of the assistant (`commands/`). Entry points outside the
layer contract: they may import any layer of the assistant; nothing imports them."""
