extension MigrationPlan {
    /// Checks what can be checked without the stores: names present and unique, relationship
    /// targets that exist, policies the engine can honour. Errors name the plan path.
    public func validate() throws(MigrationError) {
        guard !entities.isEmpty else { throw MigrationError(.invalidPlan, "entities: the plan has no entity") }
        var seen: [String: Int] = [:]
        let names = entities.map(\.name)
        for (index, entity) in entities.enumerated() {
            let path = "entities[\(index)]"
            guard !entity.name.isEmpty else { throw MigrationError(.invalidPlan, "\(path).name is empty") }
            if let first = seen[entity.name] {
                throw MigrationError(.invalidPlan, "\(path).name: entity \"\(entity.name)\" is already defined by entities[\(first)]")
            }
            seen[entity.name] = index
            guard !entity.source.table.isEmpty else { throw MigrationError(.invalidPlan, "\(path).source.table is empty") }
            guard !entity.destination.table.isEmpty else { throw MigrationError(.invalidPlan, "\(path).destination.table is empty") }
            for column in entity.relationships.keys.sorted() where entity.columns[column] != nil {
                throw MigrationError(
                    .invalidPlan,
                    "\(path).relationships.\(column): destination column \(column) is also mapped in \(path).columns")
            }
            if let distinct = entity.distinct {
                guard entity.keys == .allocate else {
                    throw MigrationError(
                        .invalidPlan,
                        "\(path).keys: a de-duplicated entity (distinct) allocates its keys; its rows are values, not source rows")
                }
                guard !distinct.source.isEmpty, !distinct.destination.isEmpty else {
                    throw MigrationError(.invalidPlan, "\(path).distinct: source and destination must both be given")
                }
                if entity.columns[distinct.destination] != nil {
                    throw MigrationError(
                        .invalidPlan,
                        "\(path).columns.\(distinct.destination): the natural-key column is filled from distinct.source; remove it from columns"
                    )
                }
            }
            if let key = entity.destination.key {
                if entity.columns[key] != nil || entity.relationships[key] != nil {
                    throw MigrationError(
                        .invalidPlan,
                        "\(path): destination key column \(key) is filled by the engine and cannot also be mapped")
                }
            }
        }
        let order = executionOrder()
        for (index, entity) in entities.enumerated() {
            for (column, relationship) in entity.sortedRelationships {
                let path = "entities[\(index)].relationships.\(column)"
                guard let targetIndex = seen[relationship.to] else {
                    throw MigrationError(
                        .invalidPlan,
                        "\(path).to: no entity is named \"\(relationship.to)\"\(Self.suggestion(for: relationship.to, among: names))")
                }
                if case let target = entities[targetIndex], target.distinct != nil {
                    if relationship.missing == .skip {
                        throw MigrationError(
                            .invalidPlan,
                            "\(path).missing: \"skip\" is not available for a relationship to a de-duplicated entity (\(target.name)); use \"null\" or \"fail\""
                        )
                    }
                    if order.isDeferred(entity: index, column: column) {
                        throw MigrationError(
                            .invalidPlan,
                            "\(path).to: a relationship to a de-duplicated entity resolves by value and must not refer to its own entity or close a cycle"
                        )
                    }
                }
                if order.isDeferred(entity: index, column: column) && relationship.missing == .skip {
                    throw MigrationError(
                        .invalidPlan,
                        "\(path).missing: \"skip\" cannot be used on a self-reference or a relationship that closes a cycle (its target is not migrated yet when the row is copied); use \"null\" or \"fail\""
                    )
                }
            }
        }
    }

    /// `; did you mean "Conversation"?` when a name is within two edits of one of `names`.
    static func suggestion(for name: String, among names: [String]) -> String {
        let scored = names.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }.filter { $0.1 <= max(2, name.count / 3) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return "" }
        return "; did you mean \"\(best.0)\"?"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
