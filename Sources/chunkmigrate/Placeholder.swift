struct M { static func main() {} }
