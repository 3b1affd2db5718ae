-- The context and state indexes end with the id, as ListTasks orders (status time, then id,
-- newest first). Without it only the tenant's time index gave that order, and SQLite, which
-- keeps no statistics unless asked, read a page of one context or state by walking every task
-- of the tenant in time order; now each filter's own index gives the order too, and is chosen.

DROP INDEX a2a_tasks_by_context;
DROP INDEX a2a_tasks_by_state;

CREATE INDEX a2a_tasks_by_context ON a2a_tasks (tenant, context_id, status_millis DESC, id DESC);
CREATE INDEX a2a_tasks_by_state ON a2a_tasks (tenant, state, status_millis DESC, id DESC);
