//! Bringing an older copy of a task up to date by copying only what differs.
//!
//! An event changes a task a little (its status, one artifact, one more message) and leaves
//! the rest as it was, so refreshing the version before last costs a comparison of what
//! stayed the same, where a fresh copy would allocate every string of the task again.

use a2a_protocol_types::Task;

/// Makes `copy` equal to `task`, keeping the parts of `copy` that already match.
pub(crate) fn refresh(copy: &mut Task, task: &Task) {
    // Destructured in full, so a field added to `Task` cannot be forgotten here.
    let Task {
        id,
        context_id,
        status,
        artifacts,
        history,
        metadata,
        generation,
    } = task;
    refresh_value(&mut copy.id, id);
    refresh_value(&mut copy.context_id, context_id);
    refresh_value(&mut copy.status, status);
    refresh_list(&mut copy.artifacts, artifacts);
    refresh_list(&mut copy.history, history);
    refresh_value(&mut copy.metadata, metadata);
    copy.generation = *generation;
}

fn refresh_value<T: Clone + PartialEq>(copy: &mut T, value: &T) {
    if copy != value {
        copy.clone_from(value);
    }
}

fn refresh_list<T: Clone + PartialEq>(copy: &mut Vec<T>, list: &[T]) {
    copy.truncate(list.len());
    for (mine, theirs) in copy.iter_mut().zip(list) {
        refresh_value(mine, theirs);
    }
    let kept = copy.len();
    // Exactly: a task may be stored for a long time, so it carries no room to grow.
    copy.reserve_exact(list.len() - kept);
    copy.extend_from_slice(&list[kept..]);
}

#[cfg(test)]
mod tests {
    use a2a_protocol_types::{Artifact, Message, Part, TaskState, TaskStatus};
    use serde_json::json;

    use super::*;

    fn task(state: TaskState, history: usize, artifacts: usize) -> Task {
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(state));
        task.history = (0..history)
            .map(|i| Message::user_text(format!("m{i}")))
            .collect();
        task.artifacts = (0..artifacts)
            .map(|i| Artifact::new(format!("a{i}"), vec![Part::text(format!("p{i}"))]))
            .collect();
        task
    }

    #[test]
    fn a_refreshed_copy_equals_the_task_whatever_it_held_before() {
        let mut newer = task(TaskState::Completed, 3, 2);
        newer.metadata = Some(serde_json::from_value(json!({"k": "v"})).expect("a map"));
        newer.status.message = Some(Message::agent_text("done"));
        let olders = [
            task(TaskState::Working, 2, 1),
            task(TaskState::Submitted, 0, 0),
            task(TaskState::Failed, 5, 4),
            Task::new("other", "other", TaskStatus::new(TaskState::Working)),
            newer.clone(),
        ];
        for mut copy in olders {
            refresh(&mut copy, &newer);
            assert_eq!(copy, newer);
        }
    }

    #[test]
    fn a_changed_artifact_in_the_middle_is_copied() {
        let older = task(TaskState::Working, 1, 3);
        let mut newer = older.clone();
        newer.artifacts[1].parts.push(Part::text("more"));
        let mut copy = older;
        refresh(&mut copy, &newer);
        assert_eq!(copy, newer);
    }
}
