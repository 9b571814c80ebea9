// Properties that queries filter by.
CREATE INDEX kernel_task IF NOT EXISTS FOR (n:Kernel) ON (n.namespace, n.task);
CREATE INDEX measurement_target IF NOT EXISTS FOR (n:Measurement) ON (n.namespace, n.target);
CREATE INDEX attempt_run IF NOT EXISTS FOR (n:Attempt) ON (n.namespace, n.run_id);
CREATE INDEX attempt_outcome IF NOT EXISTS FOR (n:Attempt) ON (n.outcome);
CREATE INDEX attempt_target IF NOT EXISTS FOR (n:Attempt) ON (n.namespace, n.target);
CREATE INDEX measurement_namespace IF NOT EXISTS FOR (n:Measurement) ON (n.namespace);
CREATE INDEX kernel_namespace IF NOT EXISTS FOR (n:Kernel) ON (n.namespace);
