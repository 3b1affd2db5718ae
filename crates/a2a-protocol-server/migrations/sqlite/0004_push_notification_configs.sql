-- Push notification configs: a task's webhooks. Each row belongs to its task (tenant and id as
-- the task is stored) and is deleted with it by retention; body is the config's JSON.

CREATE TABLE a2a_push_configs (
    tenant         TEXT   NOT NULL,
    task_id        TEXT   NOT NULL,
    id             TEXT   NOT NULL,
    body           TEXT   NOT NULL,
    created_millis BIGINT NOT NULL,
    PRIMARY KEY (tenant, task_id, id)
);
