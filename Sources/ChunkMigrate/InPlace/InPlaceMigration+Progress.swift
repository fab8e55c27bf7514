extension InPlaceMigration {
    /// A run's reports: where the job stands after each batch (``InPlaceMigration/Status``), and
    /// its progress (``MigrationProgress``), from what the batches did, with no query of its own.
    ///
    /// The whole job's fraction is its steps done, with the share of the step under way that its
    /// batches have gone through, by rowid (the last done over the table's largest): each step
    /// counts the same, as the steps differ more in what they do to a row than in their rows.
    struct Report {
        private(set) var status: Status?
        /// The rowids the next batch of a chunked step takes.
        var batchSize: Int
        private var fraction = 0.0
        /// Rowids this run has gone through, and when it began, for its rate.
        private var rowids: Int64 = 0
        private let started = ContinuousClock.now

        init(status: Status?, batchSize: Int) {
            self.status = status
            self.batchSize = batchSize
        }

        /// The report of `step`'s batch number `number`, which did `batch`; `next` is the step
        /// under way or next after it.
        mutating func after(
            _ step: Step, _ batch: Batch, before cursor: Int64?, number: UInt64,
            next: (step: Step, cursor: Int64?)?
        ) -> MigrationProgress {
            if var status {
                if batch.finished { status.stepsDone += 1 }
                status.currentStep = next?.step.label
                status.cursor = next?.cursor
                self.status = status
            }
            let steps = Double(max(1, status?.steps ?? 1))
            let done = Double(status?.stepsDone ?? 0)
            var share = 0.0
            if !batch.finished, let last = batch.cursor, let largest = batch.lastRowid, largest > 0 {
                share = min(1, max(0, Double(last) / Double(largest)))
            }
            // Below 1 until the job's last report, and never back.
            fraction = max(fraction, min(0.999, (done + share) / steps))
            if let last = batch.cursor { rowids += max(0, last - (cursor ?? 0)) }
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let reached = batch.cursor ?? 0, extent = batch.lastRowid ?? 0
            return MigrationProgress(
                entity: step.label, phase: .inPlace(step: step.label), table: step.table, fraction: fraction,
                batch: number, rowsDone: reached, rowsTotal: extent, jobRowsDone: reached,
                jobRowsTotal: extent, rowsPerSecond: seconds > 0 ? Double(rowids) / seconds : 0,
                estimatedRemaining: nil, batchSize: batchSize)
        }

        /// The last report of the job, whose fraction is 1.
        func complete() -> MigrationProgress {
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            return MigrationProgress(
                entity: "", phase: .complete, table: nil, fraction: 1, batch: 0, rowsDone: 0, rowsTotal: 0,
                jobRowsDone: 0, jobRowsTotal: 0, rowsPerSecond: seconds > 0 ? Double(rowids) / seconds : 0,
                estimatedRemaining: .zero, batchSize: batchSize)
        }
    }
}
