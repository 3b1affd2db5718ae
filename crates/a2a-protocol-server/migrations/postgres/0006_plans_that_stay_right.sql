-- Plans that stay right from an empty table on (PostgreSQL).
--
-- A server keeps each statement's plan once it has run a few times, and a plan made while
-- a2a_tasks is new and small can read a task by an index that only fits its tenant (every
-- index listing tasks starts with the tenant) and then scan a whole tenant's tasks on every
-- write, until the table is next analyzed. So the listing indexes are partial: only a query
-- that states the always-true condition below (as ListTasks does) can use them, and a statement
-- that finds a task by its id (every write, every read of one task) has only the primary key.
-- Retention ages terminal tasks only, so its index holds only those. The context and state
-- indexes end with the id, as ListTasks orders, so a page of one context or state reads in
-- order from its own index.

DROP INDEX a2a_tasks_by_status_time;
DROP INDEX a2a_tasks_by_context;
DROP INDEX a2a_tasks_by_state;
DROP INDEX a2a_tasks_by_caller;
DROP INDEX a2a_tasks_for_retention;

CREATE INDEX a2a_tasks_by_status_time ON a2a_tasks (tenant, status_millis DESC, id DESC)
    WHERE status_millis >= -9223372036854775807;
CREATE INDEX a2a_tasks_by_context ON a2a_tasks (tenant, context_id, status_millis DESC, id DESC)
    WHERE status_millis >= -9223372036854775807;
CREATE INDEX a2a_tasks_by_state ON a2a_tasks (tenant, state, status_millis DESC, id DESC)
    WHERE status_millis >= -9223372036854775807;
CREATE INDEX a2a_tasks_by_caller ON a2a_tasks (tenant, caller, status_millis DESC, id DESC)
    WHERE caller IS NOT NULL AND status_millis >= -9223372036854775807;
CREATE INDEX a2a_tasks_for_retention ON a2a_tasks (updated_millis) WHERE terminal;
