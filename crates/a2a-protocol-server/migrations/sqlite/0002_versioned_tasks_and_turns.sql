-- Versioned tasks and turns owned through the store (SQLite).
--
-- revision:   increased by every write; a write names the revision it read, so of two racing
--             writers only one wins.
-- generation: the A2A task generation, increased by every event; followers read the events
--             after the generation they saw from a2a_task_events.
-- owner:      the server process running the task's current turn (NULL between turns); a turn
--             whose owner's heartbeat in a2a_owners lapsed is orphaned, and recovery settles it.
-- History moves out of the task body into a2a_task_messages, so an event writes one message
-- at most instead of the whole history. updated_millis is written when a task is created and
-- when it becomes terminal (retention ages terminal tasks on it), not on every event, so an
-- event that changes no indexed column (an artifact) changes no index.

ALTER TABLE a2a_tasks ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
ALTER TABLE a2a_tasks ADD COLUMN generation BIGINT NOT NULL DEFAULT 1;
ALTER TABLE a2a_tasks ADD COLUMN owner TEXT;
ALTER TABLE a2a_tasks ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE a2a_tasks ADD COLUMN lease_ttl_millis BIGINT;
ALTER TABLE a2a_tasks ADD COLUMN lease_deadline_millis BIGINT;
ALTER TABLE a2a_tasks ADD COLUMN recoveries INTEGER NOT NULL DEFAULT 0;

CREATE TABLE a2a_task_messages (
    tenant  TEXT   NOT NULL,
    task_id TEXT   NOT NULL,
    seq     BIGINT NOT NULL,
    body    TEXT   NOT NULL,
    PRIMARY KEY (tenant, task_id, seq)
);

INSERT INTO a2a_task_messages (tenant, task_id, seq, body)
    SELECT t.tenant, t.id, CAST(m.key AS INTEGER), m.value
    FROM a2a_tasks t, json_each(t.body, '$.history') m;
UPDATE a2a_tasks SET body = json_remove(body, '$.history')
    WHERE json_type(body, '$.history') IS NOT NULL;

-- Tasks a server of the previous version was running when it stopped can no longer finish:
-- give them an owner that never answers, so recovery settles them.
UPDATE a2a_tasks SET owner = 'lost-before-upgrade'
    WHERE terminal = FALSE
      AND state NOT IN ('TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED');

CREATE TABLE a2a_task_events (
    tenant         TEXT   NOT NULL,
    task_id        TEXT   NOT NULL,
    generation     BIGINT NOT NULL,
    body           TEXT   NOT NULL,
    created_millis BIGINT NOT NULL,
    PRIMARY KEY (tenant, task_id, generation)
);
CREATE INDEX a2a_task_events_by_age ON a2a_task_events (created_millis);

-- Processes following a task from outside the process that runs it. Where the database pushes
-- notices, a write notifies only tasks someone follows, so the common write sends none.
CREATE TABLE a2a_followers (
    tenant         TEXT   NOT NULL,
    task_id        TEXT   NOT NULL,
    process        TEXT   NOT NULL,
    expires_millis BIGINT NOT NULL,
    PRIMARY KEY (tenant, task_id, process)
);

CREATE TABLE a2a_owners (
    id             TEXT   NOT NULL PRIMARY KEY,
    expires_millis BIGINT NOT NULL
);

CREATE INDEX a2a_tasks_by_owner ON a2a_tasks (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX a2a_tasks_by_lease ON a2a_tasks (lease_deadline_millis)
    WHERE lease_deadline_millis IS NOT NULL;

-- Settings the store records about itself, such as whether it partitions tasks by tenant.
CREATE TABLE a2a_store_settings (
    name  TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);
