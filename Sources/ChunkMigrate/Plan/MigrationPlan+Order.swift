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

        // Depth-first with a stack of its own, not the call stack: a plan's chain of relationships
        // can be thousands of entities long, deeper than a worker thread's stack allows.
        enum Edge { case read(writer: Int), relationship(column: String, target: Int) }
        struct Frame { var entity: Int; var edges: [Edge]; var next = 0 }
        func frame(_ entity: Int) -> Frame {
            state[entity] = 1
            let writers = (reads[entity] ?? []).sorted().filter { $0 != entity }.map { Edge.read(writer: $0) }
            let relationships = entities[entity].sortedRelationships.compactMap { column, relationship in
                index[relationship.to].map { Edge.relationship(column: column, target: $0) }
            }
            return Frame(entity: entity, edges: writers + relationships)
        }
        for root in entities.indices where state[root] == 0 {
            var stack = [frame(root)]
            while let top = stack.last {
                guard top.next < top.edges.count else {
                    state[top.entity] = 2
                    order.append(top.entity)
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                switch top.edges[top.next] {
                case .read(let writer):
                    if state[writer] == 1 {
                        conflicts.append((top.entity, writer))
                    } else if state[writer] == 0 {
                        stack.append(frame(writer))
                    }
                case .relationship(let column, let target):
                    if target == top.entity || state[target] == 1 {
                        deferred[top.entity, default: []].insert(column)
                    } else if state[target] == 0 {
                        stack.append(frame(target))
                    }
                }
            }
        }
        return ExecutionOrder(entities: order, deferred: deferred, conflicts: conflicts.map { [$0.reader, $0.writer] })
    }
}
