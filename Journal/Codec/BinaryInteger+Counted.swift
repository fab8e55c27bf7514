extension BinaryInteger {
    /// The number and its noun, singular for one, as the tools print counts: `1 batch`,
    /// `2 batches` (`counted("batch", "batches")`), `3 records` (the plural is the singular and an
    /// `s` unless given).
    package func counted(_ singular: String, _ plural: String? = nil) -> String {
        "\(self) \(self == 1 ? singular : plural ?? singular + "s")"
    }
}
