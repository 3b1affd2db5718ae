-- The authenticated caller that created each task (NULL for a task created without one).
-- With authentication on, a caller sees, follows and cancels only the tasks it created, and
-- ListTasks filters on this column, so the index leads with it.

ALTER TABLE a2a_tasks ADD COLUMN caller TEXT;

CREATE INDEX a2a_tasks_by_caller ON a2a_tasks (tenant, caller, status_millis DESC, id DESC)
    WHERE caller IS NOT NULL;
