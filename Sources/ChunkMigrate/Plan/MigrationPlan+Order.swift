/// The order in which a plan's entities run, and which relationships wait for the fix-up pass.
struct ExecutionOrder: Equatable {
    /// Entity indexes, relationship targets before the entities that refer to them.
    var entities: [Int]
    /// For each entity index, the destination columns of relationships that cannot be resolved
    /// while the entity is copied (self-references, and the edges that close a cycle): written as
    /// NULL when their target is not mapped yet, and set by the fix-up pass.
    var deferred: [Int: Set<String>]
    /// Reads of a destination table written by an entity that cannot run first (it depends on
    /// the reader): `[reader, writer]` pairs.
    var conflicts: [[Int]] = []

    func isDeferred(entity: Int, column: String) -> Bool { deferred[entity]?.contains(column) ?? false }
}

extension MigrationPlan {
    /// Orders entities depth-first in plan order: each entity's targets first. A relationship to
    /// the entity itself, or to an entity still on the path (a cycle), is deferred.
    ///
    /// `reads` are dependencies the relationships do not declare: entity -> the entities whose
    /// destination tables its expressions read (`main.<table>`), which must run before it. One
    /// that closes a cycle cannot be deferred like a relationship: it is returned in `conflicts`.
    func executionOrder(reads: [Int: Set<Int>] = [:]) -> ExecutionOrder {
        let index = Dictionary(entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        var order: [Int] = []
        var deferred: [Int: Set<String>] = [:]
        var conflicts: [(reader: Int, writer: Int)] = []
        var state = [Int](repeating: 0, count: entities.count)  // 0 new, 1 on path, 2 done

        func visit(_ entity: Int) {
            state[entity] = 1
            for writer in (reads[entity] ?? []).sorted() where writer != entity {
                if state[writer] == 1 {
                    conflicts.append((entity, writer))
                } else if state[writer] == 0 {
                    visit(writer)
                }
            }
            for (column, relationship) in entities[entity].sortedRelationships {
                guard let target = index[relationship.to] else { continue }
                if target == entity || state[target] == 1 {
                    deferred[entity, default: []].insert(column)
                } else if state[target] == 0 {
                    visit(target)
                }
            }
            state[entity] = 2
            order.append(entity)
        }
        for entity in entities.indices where state[entity] == 0 { visit(entity) }
        return ExecutionOrder(entities: order, deferred: deferred, conflicts: conflicts.map { [$0.reader, $0.writer] })
    }
}
