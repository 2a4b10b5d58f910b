"""Price-list values as an admin reads them: money per its currency, availability in words."""

from __future__ import annotations

from decimal import Decimal

from django import template

from assistant.knowledge.money import display_money
from assistant.models import Availability

register = template.Library()


@register.simple_tag
def money(value: Decimal, currency: str) -> str:
    """`{% money row.price row.currency %}` → `32 000 ₸`."""
    return display_money(Decimal(value), currency or "")


@register.filter
def availability(code: str) -> str:
    """`in_stock` → `In stock`; an unknown code is shown as it is."""
    try:
        return str(Availability(code).label)
    except ValueError:
        return code
