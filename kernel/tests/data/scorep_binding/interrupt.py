import time


def foo():
    print("hello world")
    while True:
        time.sleep(1)
    print("By By.")


foo()
