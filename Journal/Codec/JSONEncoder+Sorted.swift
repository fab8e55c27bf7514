import Foundation

extension JSONEncoder {
    /// The encoder of every JSON document chunkmigrate writes (the journal header, a plan, the
    /// tools' `--json` reports): keys sorted, so that the same value always gives the same bytes,
    /// indented, and slashes left as they are so paths read as paths.
    package static func sortedAndIndented() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return encoder
    }
}
