"""``qaeval user ...``: accounts for the app and external raters."""

from __future__ import annotations

from typing import Annotated

import typer

from qaeval_core.cli.common import DbOption, console
from qaeval_core.errors import StoreError
from qaeval_core.store import auth
from qaeval_core.vocabulary import LOGIN_ROLES, ROLES

# The store (SQLAlchemy) is imported inside each command, so ``qaeval --help`` does not load it.

PASSWORD_HELP = (
    f"Password, at least {auth.MIN_PASSWORD_LENGTH} characters (asked for when missing)."
)


def _new_password(name: str, given: str | None) -> str:
    """The password given or typed (twice, hidden), checked against the policy."""
    password = given or typer.prompt(
        f"Password for {name}", hide_input=True, confirmation_prompt=True
    )
    return auth.check_new_password(password)


def _say(text: str) -> None:
    console.print(text, markup=False, soft_wrap=True)


def add_commands(app: typer.Typer) -> None:
    user_app = typer.Typer(
        help="Add, list and manage user accounts (passwords, roles, deactivation).",
        no_args_is_help=True,
    )

    @user_app.command("add")
    def add(
        name: Annotated[str, typer.Argument(help="Login name.")],
        role: Annotated[str, typer.Option(help=f"One of: {', '.join(ROLES)}.")] = "annotator",
        password: Annotated[
            str | None,
            typer.Option(help=PASSWORD_HELP + " External raters have none."),
        ] = None,
        db: DbOption = None,
    ) -> None:
        """Create an account (annotator, researcher, admin) or an external rater."""
        from qaeval_core import store
        from qaeval_core.store import session as store_session

        url = store_session.upgrade(db)
        if name.strip() in {u.name for u in store.list_users(url)}:
            raise StoreError(f"A user named {name.strip()!r} already exists.")
        if role in ROLES and role != "external":
            password = _new_password(name, password)
        user = store.add_user(url, name, role, password)
        _say(f"Created {user.role} {user.name!r}.")

    @user_app.command("list")
    def list_(
        role: Annotated[str | None, typer.Option(help="Only users with this role.")] = None,
        db: DbOption = None,
    ) -> None:
        """List accounts with their roles."""
        from qaeval_core import store
        from qaeval_core.store import session as store_session

        users = store.list_users(store_session.resolve_url(db), role=role)
        if not users:
            console.print("No users.")
        for u in users:
            state = "" if u.active else "  (inactive)"
            _say(f"{u.name}\t{u.role}{state}")

    @user_app.command("passwd")
    def passwd(
        name: Annotated[str, typer.Argument(help="Login name.")],
        password: Annotated[str | None, typer.Option(help=PASSWORD_HELP)] = None,
        temporary: Annotated[
            bool, typer.Option(help="The user must choose a new password at the next login.")
        ] = False,
        db: DbOption = None,
    ) -> None:
        """Set a new password; every login session of the account ends."""
        from qaeval_core import store
        from qaeval_core.store import session as store_session
        from qaeval_core.store import users as accounts

        url = store_session.upgrade(db)
        store.get_user(url, name)  # an unknown name fails before the prompt
        accounts.set_password(
            url, name, _new_password(name, password), must_change_password=temporary
        )
        _say(f"Password of {name!r} changed; its login sessions ended.")

    @user_app.command("deactivate")
    def deactivate(
        name: Annotated[str, typer.Argument(help="Login name.")], db: DbOption = None
    ) -> None:
        """Stop an account from logging in (its labels and queue stay); logs it out."""
        from qaeval_core.store import session as store_session
        from qaeval_core.store import users as accounts

        accounts.set_active(store_session.upgrade(db), name, False)
        _say(f"Deactivated {name!r}; its login sessions ended.")

    @user_app.command("activate")
    def activate(
        name: Annotated[str, typer.Argument(help="Login name.")], db: DbOption = None
    ) -> None:
        """Let a deactivated account log in again (old login sessions stay ended)."""
        from qaeval_core.store import session as store_session
        from qaeval_core.store import users as accounts

        accounts.set_active(store_session.upgrade(db), name, True)
        _say(f"Activated {name!r}.")

    @user_app.command("role")
    def role_(
        name: Annotated[str, typer.Argument(help="Login name.")],
        role: Annotated[str, typer.Argument(help=f"One of: {', '.join(LOGIN_ROLES)}.")],
        db: DbOption = None,
    ) -> None:
        """Change the role of an account (the last active admin stays admin)."""
        from qaeval_core.store import session as store_session
        from qaeval_core.store import users as accounts

        user = accounts.set_role(store_session.upgrade(db), name, role)
        _say(f"{user.name!r} is now {user.role}.")

    app.add_typer(user_app, name="user")
