def baz():
    print("baz")


def bar():
    print("bar")
