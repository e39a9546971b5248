"""``manage.py create_api_token USER [--name NAME]``: print a new API token."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks_app.accounts.auth import api_token_create


class Command(BaseCommand):
    help = "Create an API token for USER and print it (only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="A label for the token")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: options["username"]})
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {options['username']!r}") from None
        if not user.is_active:
            raise CommandError(f"User {options['username']!r} is inactive")
        _, raw = api_token_create(user=user, name=options["name"])
        self.stdout.write(raw)
