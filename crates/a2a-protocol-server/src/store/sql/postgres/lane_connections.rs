//! The connections the group writer's lanes keep between statements. The pool hands out the
//! connection idle longest, so statements taken from it spread over every backend of the
//! pool, each with cold caches; a lane instead takes back the connection it used last, and
//! the same few backends run every write.
//!
//! A kept connection idle for [`PING_WHEN_IDLE`] or more is pinged before it is used, as the
//! pool does for its own (the database may have dropped it meanwhile), and replaced from the
//! pool if the ping fails. A connection whose statement failed is not kept.

use std::sync::Mutex;
use std::time::Instant;

use sqlx::pool::PoolConnection;
use sqlx::{Connection as _, PgPool, Postgres};

use super::PING_WHEN_IDLE;

/// At most `most` connections kept, the last given back on top.
pub(super) struct LaneConnections {
    pool: PgPool,
    most: usize,
    kept: Mutex<Vec<Kept>>,
}

struct Kept {
    connection: PoolConnection<Postgres>,
    since: Instant,
}

impl LaneConnections {
    /// Keeps at most `most` connections of `pool`.
    pub(super) fn new(pool: PgPool, most: usize) -> Self {
        Self {
            pool,
            most,
            kept: Mutex::default(),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Kept>> {
        // A Vec is consistent after every step, so a panic elsewhere leaves it usable.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection given back last, or one from the pool.
    pub(super) async fn take(&self) -> Result<PoolConnection<Postgres>, sqlx::Error> {
        let kept = self.kept().pop();
        if let Some(Kept {
            mut connection,
            since,
        }) = kept
        {
            if since.elapsed() < PING_WHEN_IDLE || connection.ping().await.is_ok() {
                return Ok(connection);
            }
            connection.close_on_drop();
        }
        self.pool.acquire().await
    }

    /// Keeps `connection`, whose statement ended with `outcome`, for the next statement;
    /// unless enough are kept, or the statement failed (a failure may have ended the session,
    /// as a terminated backend's does), when it goes back to the pool, as before keeping.
    pub(super) fn give_back<T>(
        &self,
        connection: PoolConnection<Postgres>,
        outcome: &Result<T, sqlx::Error>,
    ) {
        if outcome.is_ok() {
            let mut kept = self.kept();
            if kept.len() < self.most {
                kept.push(Kept {
                    connection,
                    since: Instant::now(),
                });
            }
        }
    }
}

impl Drop for LaneConnections {
    fn drop(&mut self) {
        // A pooled connection goes back to its pool through a task on the runtime, and the
        // store may be dropped outside one (after a test's `block_on`, say): then the kept
        // connections are let go of directly, which closes them.
        if tokio::runtime::Handle::try_current().is_err() {
            for kept in self.kept().drain(..) {
                drop(kept.connection.detach());
            }
        }
    }
}
