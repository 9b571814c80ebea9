// KernelBench targets written before targets were split per GPU model and machine: the importer
// then made one target per hardware folder, whatever GPU each row names (A10G_modal mixed A10 and
// A10G rows, A100_modal 40 GB and 80 GB parts), and paired times taken on different GPUs. They are
// kept, attempts and all (nothing stored is lost), but marked superseded, so the transfer matrix and
// predictions leave them out. Re-importing the timings adds the per-model targets beside them.
// Idempotent: only targets not yet marked are touched.
MATCH (h:HardwareTarget)
WHERE h.description STARTS WITH 'KernelBench timing directory ' AND h.superseded_by IS NULL
SET h.superseded_by = 'kernelbench-timing: one target per GPU model and machine since schema 0004; re-import the timings',
    h.updated_at = datetime();
