@main
struct Main2 { static func main() {} }
