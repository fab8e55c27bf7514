/// An archive being written: objects are appended to `$objects` and referred to by index.
struct KeyedArchiveWriter {
    private(set) var objects: [PropertyList] = [.string("$null")]
    private var classes: [String: Int] = [:]

    /// A reference to `$null`.
    static let null = PropertyList.uid(0)

    /// Appends an object of class `className` (with its superclasses, for `$classes`) and
    /// returns its reference; `fields` may refer to objects appended later through ``reserve()``.
    mutating func append(_ className: String, superclasses: [String] = ["NSObject"], _ fields: [String: PropertyList]) -> PropertyList {
        let reference = reserve()
        fill(reference, className, superclasses: superclasses, fields)
        return reference
    }

    /// A reference to an object whose contents ``fill(_:_:superclasses:_:)`` gives later (for
    /// objects that refer to each other).
    mutating func reserve() -> PropertyList {
        objects.append(.string("$null"))
        return .uid(objects.count - 1)
    }

    /// Gives the object `reference` its class and fields.
    mutating func fill(
        _ reference: PropertyList, _ className: String, superclasses: [String] = ["NSObject"],
        _ fields: [String: PropertyList]
    ) {
        guard case let .uid(index) = reference else { return }
        var fields = fields
        fields["$class"] = classReference(className, superclasses: superclasses)
        objects[index] = .dictionary(fields)
    }

    /// A string object.
    mutating func string(_ text: String?) -> PropertyList {
        guard let text else { return Self.null }
        objects.append(.string(text))
        return .uid(objects.count - 1)
    }

    /// An `NSArray` of references.
    mutating func array(_ elements: [PropertyList], className: String = "NSArray") -> PropertyList {
        append(className, superclasses: className == "NSArray" ? ["NSObject"] : ["NSArray", "NSObject"], ["NS.objects": .array(elements)])
    }

    /// An `NSDictionary` of references by string key, in the given order.
    mutating func dictionary(_ entries: [(String, PropertyList)], className: String = "NSDictionary") -> PropertyList {
        var keys: [PropertyList] = []
        for (key, _) in entries { keys.append(string(key)) }
        return append(
            className, superclasses: className == "NSDictionary" ? ["NSObject"] : ["NSDictionary", "NSObject"],
            ["NS.keys": .array(keys), "NS.objects": .array(entries.map(\.1))])
    }

    private mutating func classReference(_ name: String, superclasses: [String]) -> PropertyList {
        if let index = classes[name] { return .uid(index) }
        objects.append(.dictionary(["$classname": .string(name), "$classes": .array(([name] + superclasses).map(PropertyList.string))]))
        classes[name] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// The archive with `root` as its `$top.root`.
    func archive(root: PropertyList) -> PropertyList {
        .dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100_000),
            "$top": .dictionary(["root": root]), "$objects": .array(objects),
        ])
    }
}
