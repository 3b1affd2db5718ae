-- Tasks, and the idempotency key index. The same SQL runs on SQLite and PostgreSQL.
--
-- The key table has no foreign key to tasks and nothing cascades: a key outlives its task, so a
-- retry after a retention sweep finds the key and answers TaskNotFound instead of running again.

CREATE TABLE a2a_tasks (
    tenant          TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    context_id      TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    -- The status timestamp, in ms since the epoch: ListTasks orders and filters on it.
    status_millis   BIGINT  NOT NULL,
    -- When the store last wrote the task, in ms since the epoch: retention ages on it.
    updated_millis  BIGINT  NOT NULL,
    terminal        BOOLEAN NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE INDEX a2a_tasks_by_status_time ON a2a_tasks (tenant, status_millis DESC, id DESC);
CREATE INDEX a2a_tasks_by_context ON a2a_tasks (tenant, context_id, status_millis DESC);
CREATE INDEX a2a_tasks_by_state ON a2a_tasks (tenant, state, status_millis DESC);
CREATE INDEX a2a_tasks_for_retention ON a2a_tasks (terminal, updated_millis);

CREATE TABLE a2a_idempotency_keys (
    tenant          TEXT    NOT NULL,
    -- The authenticated caller, length-prefixed ('-' when there is none).
    caller          TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,
    task_id         TEXT    NOT NULL,
    -- A random value per claim attempt: the claim that reads its own token back inserted the row.
    claim_token     TEXT    NOT NULL,
    created_millis  BIGINT  NOT NULL,
    PRIMARY KEY (tenant, caller, idempotency_key)
);

CREATE INDEX a2a_idempotency_keys_for_retention ON a2a_idempotency_keys (created_millis);
