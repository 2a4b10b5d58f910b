"""A business's own tools for managers: `Label`s on chats and `CannedReply` texts.

Kept apart from `models.py` (which imports this module at its end, so Django registers them);
the foreign keys are named by string, so nothing here imports the other models.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Label(models.Model):
    """A business's own tag for chats ("VIP", "delivery"), in one colour of a fixed palette
    whose text and background pass WCAG AA contrast."""

    class Colour(models.TextChoices):
        GREY = "grey", _("Grey")
        BLUE = "blue", _("Blue")
        GREEN = "green", _("Green")
        AMBER = "amber", _("Amber")
        RED = "red", _("Red")
        PURPLE = "purple", _("Purple")

    business = models.ForeignKey("inbox.Business", on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=40)
    colour = models.CharField(max_length=8, choices=Colour.choices, default=Colour.BLUE)
    chats = models.ManyToManyField("inbox.Chat", blank=True, related_name="labels")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["business", "name"], name="label_unique_name")
        ]

    def __str__(self) -> str:
        return self.name


class CannedReply(models.Model):
    """A reply a business's managers insert by typing `/` in the composer. The text may name
    {customer_name}, {manager_name} and {business_name}; they are filled for the chat."""

    business = models.ForeignKey(
        "inbox.Business", on_delete=models.CASCADE, related_name="canned_replies"
    )
    title = models.CharField(max_length=80)
    shortcut = models.SlugField(
        max_length=32, blank=True, allow_unicode=True, help_text="Typed after / to find it fast."
    )
    text = models.TextField(max_length=4096)

    class Meta:
        ordering = ["title"]
        verbose_name_plural = "canned replies"

    def __str__(self) -> str:
        return self.title
