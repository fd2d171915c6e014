"""``qaeval db ...``: schema management."""

from __future__ import annotations

import typer

from qaeval_core.cli.common import DbOption, console


def add_commands(app: typer.Typer) -> None:
    db_app = typer.Typer(help="Create or upgrade the store's schema.", no_args_is_help=True)

    @db_app.command("upgrade")
    def upgrade(
        db: DbOption = None,
        revision: str = typer.Option("head", help="Target Alembic revision."),
    ) -> None:
        """Create the schema or bring it up to date (safe to run repeatedly)."""
        from qaeval_core import store
        from qaeval_core.store import session as store_session

        url = store_session.upgrade(db, revision)
        rev = store_session.current_revision(url)
        console.print(f"Store {store_session._safe(url)} is at revision {rev}.")
        if revision == "head" and (cleaned := store.cleanup_imports(url)):
            console.print(cleaned.summary())

    @db_app.command("current")
    def current(db: DbOption = None) -> None:
        """Show the store's schema revision and the newest one this qaeval knows."""
        from qaeval_core.store import session as store_session

        url = store_session.resolve_url(db)
        rev = store_session.current_revision(url)
        console.print(f"current: {rev or '(empty store)'}  head: {store_session.head_revision()}")

    app.add_typer(db_app, name="db")
