-- The push outbox: one row per notification to deliver, written in the same statement or
-- transaction as the event it announces (one per push config of the task). A delivery worker
-- claims the oldest live row of each (task, config) for a while (claimed_by, claimed_until),
-- then deletes it once delivered, moves it later to retry, or marks it dead. Rows go with their
-- task (retention) or their config (delete).

CREATE TABLE a2a_push_outbox (
    tenant               TEXT    NOT NULL,
    task_id              TEXT    NOT NULL,
    config_id            TEXT    NOT NULL,
    generation           BIGINT  NOT NULL,
    body                 TEXT    NOT NULL,
    dead                 BOOLEAN NOT NULL DEFAULT FALSE,
    attempts             INTEGER NOT NULL DEFAULT 0,
    due_millis           BIGINT  NOT NULL,
    claimed_by           TEXT,
    claimed_until_millis BIGINT  NOT NULL DEFAULT 0,
    last_error           TEXT,
    created_millis       BIGINT  NOT NULL,
    PRIMARY KEY (tenant, task_id, config_id, generation)
);

CREATE INDEX a2a_push_outbox_due ON a2a_push_outbox (dead, due_millis);
