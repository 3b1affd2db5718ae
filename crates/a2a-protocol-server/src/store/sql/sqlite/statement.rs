//! A statement run on a connection, prepared once per connection, in the three shapes the
//! store uses; errors classified ("busy" or not) on the way out.

use rusqlite::{Connection, OptionalExtension as _, Params, Row};

use super::classify;
use crate::store::StoreError;

/// Runs `sql`; how many rows it changed.
pub(super) fn execute(
    connection: &Connection,
    sql: &str,
    args: impl Params,
) -> Result<usize, StoreError> {
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.execute(args))
        .map_err(classify)
}

/// Every row `sql` returns, each read by `read`.
pub(super) fn rows<T>(
    connection: &Connection,
    sql: &str,
    args: impl Params,
    read: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.query_map(args, read)?.collect())
        .map_err(classify)
}

/// The first row `sql` returns, read by `read`, if it returns one.
pub(super) fn row<T>(
    connection: &Connection,
    sql: &str,
    args: impl Params,
    read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Option<T>, StoreError> {
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.query_row(args, read).optional())
        .map_err(classify)
}
