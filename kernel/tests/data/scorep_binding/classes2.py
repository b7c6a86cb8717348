import classes

t = classes.TestClass
t().doo()
