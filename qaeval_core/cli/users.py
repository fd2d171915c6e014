"""``qaeval user ...``: accounts for the app and external raters."""

from __future__ import annotations

from typing import Annotated

import typer

from qaeval_core.cli.common import DbOption, console
from qaeval_core.store import repo
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import ROLES


def register(app: typer.Typer) -> None:
    user_app = typer.Typer(help="Add and list user accounts.", no_args_is_help=True)

    @user_app.command("add")
    def add(
        name: Annotated[str, typer.Argument(help="Login name.")],
        role: Annotated[str, typer.Option(help=f"One of: {', '.join(ROLES)}.")] = "annotator",
        password: Annotated[
            str | None,
            typer.Option(help="Password (asked for when missing; external raters have none)."),
        ] = None,
        db: DbOption = None,
    ) -> None:
        """Create an account (annotator, researcher, admin) or an external rater."""
        if role in ROLES and role != "external" and not password:
            password = typer.prompt(
                f"Password for {name}", hide_input=True, confirmation_prompt=True
            )
        url = store_session.upgrade(db)
        user = repo.add_user(url, name, role, password)
        console.print(f"Created {user.role} {user.name!r}.", markup=False, soft_wrap=True)

    @user_app.command("list")
    def list_(
        role: Annotated[str | None, typer.Option(help="Only users with this role.")] = None,
        db: DbOption = None,
    ) -> None:
        """List accounts with their roles."""
        users = repo.list_users(store_session.resolve_url(db), role=role)
        if not users:
            console.print("No users.")
        for u in users:
            state = "" if u.active else "  (inactive)"
            console.print(f"{u.name}\t{u.role}{state}", markup=False, soft_wrap=True)

    app.add_typer(user_app, name="user")
